# Install rules and Debian packages (cpack -G DEB).
# Packages: tessel-scheduler, tessel-agent, tessel-workers, tessel-cli.
# Configure with -DCMAKE_INSTALL_PREFIX=/usr for packages (then config goes to /etc/tessel).
include(GNUInstallDirs)

set(TESSEL_UNIT_DIR "lib/systemd/system" CACHE STRING "systemd unit directory, relative to the prefix")
set(TESSEL_CONF_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/tessel")

set(TESSEL_PACKAGES)
macro(tessel_install_component component)
  list(APPEND TESSEL_PACKAGES ${component})
endmacro()

if(TARGET tessel-scheduler)
  install(TARGETS tessel-scheduler RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT scheduler)
  install(FILES systemd/tessel-scheduler.service DESTINATION ${TESSEL_UNIT_DIR} COMPONENT scheduler)
  install(FILES systemd/conf/scheduler.conf systemd/conf/tokens.example DESTINATION ${TESSEL_CONF_DIR} COMPONENT scheduler)
  install(FILES README.md api/openapi.yaml DESTINATION ${CMAKE_INSTALL_DOCDIR}/../tessel-scheduler COMPONENT scheduler OPTIONAL)
  # The guides the README links to, under docs/ so its links resolve in the installed copy.
  install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/../tessel-scheduler/docs COMPONENT scheduler
          FILES_MATCHING PATTERN "*.md")
  tessel_install_component(scheduler)
endif()
if(TARGET tessel-agent)
  install(TARGETS tessel-agent RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
  if(TARGET tessel-supervisor)
    install(TARGETS tessel-supervisor RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT agent)
  endif()
  install(FILES systemd/tessel-agent.service DESTINATION ${TESSEL_UNIT_DIR} COMPONENT agent)
  install(FILES systemd/conf/agent.conf DESTINATION ${TESSEL_CONF_DIR} COMPONENT agent)
  install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}/../tessel-agent COMPONENT agent)
  install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/../tessel-agent/docs COMPONENT agent
          FILES_MATCHING PATTERN "*.md")
  tessel_install_component(agent)
endif()
if(TARGET tessel)
  install(TARGETS tessel RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT cli)
  tessel_install_component(cli)
endif()
if(TARGET tessel-train)
  install(TARGETS tessel-train tessel-infer RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT workers)
  tessel_install_component(workers)
endif()

set(CPACK_PACKAGE_NAME tessel)
set(CPACK_PACKAGE_VENDOR "Tessel")
set(CPACK_PACKAGE_CONTACT "Tessel developers <dev@tessel.invalid>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "Topology-aware job scheduler for Intel Gaudi and NVIDIA clusters")
set(CPACK_GENERATOR DEB)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL ${TESSEL_PACKAGES})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})

set(CPACK_DEBIAN_SCHEDULER_PACKAGE_NAME tessel-scheduler)
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_DEPENDS "adduser, init-system-helpers")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_RECOMMENDS "tessel-cli")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/scheduler/postinst;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/scheduler/prerm;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/scheduler/postrm;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/scheduler/conffiles")
set(CPACK_DEBIAN_SCHEDULER_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_AGENT_PACKAGE_NAME tessel-agent)
set(CPACK_DEBIAN_AGENT_PACKAGE_DEPENDS "adduser, init-system-helpers")
set(CPACK_DEBIAN_AGENT_PACKAGE_RECOMMENDS "tessel-cli, tessel-workers, podman, runc, catatonit")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/agent/postinst;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/agent/prerm;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/agent/postrm;${CMAKE_CURRENT_SOURCE_DIR}/packaging/debian/agent/conffiles")
set(CPACK_DEBIAN_AGENT_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)
set(CPACK_DEBIAN_WORKERS_PACKAGE_NAME tessel-workers)
# LibTorch's matrix products go through libblas.so.3: the reference BLAS without this.
# The OpenMP build: Debian's serial one is not thread-safe (tests/workers/blas_test.cpp).
set(CPACK_DEBIAN_WORKERS_PACKAGE_RECOMMENDS "libopenblas0-openmp")
set(CPACK_DEBIAN_CLI_PACKAGE_NAME tessel-cli)

include(CPack)

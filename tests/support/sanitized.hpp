#pragma once
// kSanitized: whether this test binary was built with AddressSanitizer (the CI's
// ASan+UBSan build, about 10x slower at -O0). Timeouts grow and long randomized runs
// shrink there; what a test checks stays the same.

namespace tessel::testkit {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
#else
inline constexpr bool kSanitized = false;
#endif

}  // namespace tessel::testkit

#pragma once
// The JobSpec parser's readers of its field groups, each in a file of its own:
// parse_job_spec() (job.cpp) calls them in order. Internal to tessel_api.

#include <optional>

#include <nlohmann/json.hpp>

#include "tessel/api/job.hpp"

namespace tessel::api {

// image, image_pull, mounts and shm_size_mib; the last three need an image
// (job_container_fields.cpp). After workdir.
void read_container_fields(FieldReader& r, const nlohmann::json& j, JobSpec& s);

// `array`: {"count": N, "parallel": P} or {"indices": "1,3,7-9", "parallel": P} (a
// count beside indices must be theirs); the first problem, with its full field path
// (job_array.cpp).
std::optional<FieldError> read_array(const nlohmann::json& a, ArraySpec& out);

// node_selector, nodelist, exclude, reservation and topology (job_node_fields.cpp).
// After nodes.
void read_node_constraints(FieldReader& r, const nlohmann::json& j, JobSpec& s);

}  // namespace tessel::api

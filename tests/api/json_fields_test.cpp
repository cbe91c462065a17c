// FieldReader: typed fields, the first error with its dotted path, unknown fields.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tessel/api/json_fields.hpp"

namespace tessel::api {
namespace {

using nlohmann::json;

TEST(FieldReader, ReadsTypedFieldsAndNamesTheFirstProblemWithItsPath) {
  const json j = {{"name", "a"}, {"count", 3}, {"on", true}, {"gone", nullptr}};
  FieldReader r(j, "spec");
  std::string name;
  int count = 0;
  bool on = false;
  std::optional<int64_t> gone = 5;
  r.required_string("name", name, 8);
  r.required_int("count", count, 0, 10);
  r.optional_bool("on", on);
  r.nullable_int("gone", gone);
  EXPECT_FALSE(r.finish()) << *r.finish();
  EXPECT_EQ(name, "a");
  EXPECT_EQ(count, 3);
  EXPECT_TRUE(on);
  EXPECT_EQ(gone, 5) << "a null field leaves the value as it was";

  FieldReader bad(j, "spec");
  bad.required_int("name", count, 0, 10);
  bad.required_int("count", count, 4, 10);
  const auto e = bad.finish_field();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "spec.name");
  EXPECT_EQ(e->message, "spec.name: must be an integer");

  const json empty = json::object();
  FieldReader missing(empty, "");
  missing.required_string("model", name, 8);
  EXPECT_EQ(missing.finish(), "model: is required");
}

TEST(FieldReader, AFieldNotAskedForIsUnknownEvenIfAnotherWasAskedForTwice) {
  const json j = {{"a", 1}, {"b", 2}};
  FieldReader r(j, "x");
  EXPECT_TRUE(r.has("a"));
  EXPECT_TRUE(r.has("a"));
  EXPECT_FALSE(r.has("c"));
  const auto e = r.finish_field();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->field, "x.b");
  EXPECT_EQ(e->message, "x.b: unknown field");

  FieldReader allowed(j, "x");
  allowed.has("a");
  allowed.allow("b");
  EXPECT_FALSE(allowed.finish());
}

TEST(FieldReader, ANullFieldIsKnownButAbsentAndANonObjectHasNoFields) {
  const json j = {{"n", nullptr}};
  FieldReader r(j, "");
  EXPECT_FALSE(r.has("n"));
  EXPECT_FALSE(r.finish());

  for (const json& other : {json::array({1, 2}), json("text"), json(7)}) {
    FieldReader o(other, "");
    EXPECT_FALSE(o.has("a"));
    std::string s;
    o.optional_string("a", s, 8);
    EXPECT_FALSE(o.finish()) << other.dump();
  }
}

TEST(FieldReader, ALongKeyAndATooLongValue) {
  const json j = {{"firmware_version_of_the_card", std::string(20, 'v')}};
  FieldReader r(j, "devices[0]");
  std::string v;
  r.optional_string("firmware_version_of_the_card", v, 16);
  EXPECT_EQ(r.finish(), "devices[0].firmware_version_of_the_card: longer than 16 characters");
  EXPECT_TRUE(v.empty());
}

}  // namespace
}  // namespace tessel::api

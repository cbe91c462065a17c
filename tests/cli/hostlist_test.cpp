#include "tessel/cli/hostlist.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tessel/cli/reservation_commands.hpp"
#include "tessel/cli/submit_args.hpp"

namespace tessel::cli {
namespace {

using Names = std::vector<std::string>;

Names expand(const std::string& text) {
  auto r = expand_hostlist(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().message;
  return r.ok() ? *r : Names{};
}

std::string error_of(const std::string& text) {
  auto r = expand_hostlist(text);
  EXPECT_FALSE(r.ok()) << text << " expanded";
  return r.ok() ? "" : r.error().message;
}

TEST(Hostlist, PlainNamesAndRanges) {
  EXPECT_EQ(expand("n1"), Names({"n1"}));
  EXPECT_EQ(expand("n1,n4"), Names({"n1", "n4"}));
  EXPECT_EQ(expand("n[1-3,7]"), Names({"n1", "n2", "n3", "n7"}));
  EXPECT_EQ(expand("n[5]"), Names({"n5"}));
  EXPECT_EQ(expand("n[9-11],m2"), Names({"n9", "n10", "n11", "m2"}));
  EXPECT_EQ(expand("[1-2]x"), Names({"1x", "2x"}));
  EXPECT_EQ(expand("n1,n1"), Names({"n1", "n1"}));  // Kept: the server names duplicates.
}

TEST(Hostlist, LeadingZerosSetTheWidth) {
  EXPECT_EQ(expand("gpu[08-10]"), Names({"gpu08", "gpu09", "gpu10"}));
  EXPECT_EQ(expand("gpu[001-002]"), Names({"gpu001", "gpu002"}));
  EXPECT_EQ(expand("gpu[0-1]"), Names({"gpu0", "gpu1"}));  // "0" alone is no width.
  EXPECT_EQ(expand("gpu[98-100]"), Names({"gpu98", "gpu99", "gpu100"}));
}

TEST(Hostlist, SeveralBracketsGiveEveryCombinationInOrder) {
  EXPECT_EQ(expand("r[1-2]-n[1-2]"), Names({"r1-n1", "r1-n2", "r2-n1", "r2-n2"}));
  EXPECT_EQ(expand("r[1-2]-n[1-2].lan"), Names({"r1-n1.lan", "r1-n2.lan", "r2-n1.lan", "r2-n2.lan"}));
}

TEST(Hostlist, BadTextIsAnErrorQuotingIt) {
  EXPECT_NE(error_of("").find("an empty name"), std::string::npos);
  EXPECT_NE(error_of("n1,,n2").find("an empty name"), std::string::npos);
  EXPECT_NE(error_of("n1,").find("'n1,'"), std::string::npos);
  EXPECT_NE(error_of("n[1-3").find("without its ']'"), std::string::npos);
  EXPECT_NE(error_of("n1-3]").find("without its '['"), std::string::npos);
  EXPECT_NE(error_of("n[1-[2]]").find("inside brackets"), std::string::npos);
  EXPECT_NE(error_of("n[]").find("not ranges"), std::string::npos);
  EXPECT_NE(error_of("n[a-c]").find("not ranges"), std::string::npos);
  EXPECT_NE(error_of("n[1-2-3]").find("not ranges"), std::string::npos);
  EXPECT_NE(error_of("n[1,]").find("not ranges"), std::string::npos);
  EXPECT_NE(error_of("n[1234567890]").find("not ranges"), std::string::npos);
  EXPECT_NE(error_of("n[5-2]").find("runs backwards"), std::string::npos);
}

TEST(Hostlist, AtMostTheLimitOfNames) {
  EXPECT_EQ(expand("n[1-4096]").size(), kMaxHostlistNames);
  EXPECT_NE(error_of("n[1-4097]").find("more than 4096 names"), std::string::npos);
  EXPECT_NE(error_of("n[0-999999999]").find("more than 4096 names"), std::string::npos);
  EXPECT_NE(error_of("a[1-100]b[1-100]").find("more than 4096 names"), std::string::npos);
  EXPECT_NE(error_of("n[1-4096],m").find("more than 4096 names"), std::string::npos);
  EXPECT_FALSE(expand_hostlist(std::string(kMaxHostlistChars + 1, 'n')).ok());
  auto many = expand_hostlists({"n[1-4000]", "m[1-97]"}, "-w");
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().field, "-w");
}

TEST(Hostlist, SubmitAndReservationFlagsExpandThem) {
  SubmitOptions o;
  o.command = {"/bin/true"};
  o.nodelist = {"n[1-2]", "n7"};
  o.exclude = {"gpu[08-09]"};
  auto r = build_job_request(o, "/");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)["nodelist"], nlohmann::json({"n1", "n2", "n7"}));
  EXPECT_EQ((*r)["exclude"], nlohmann::json({"gpu08", "gpu09"}));
  o.exclude = {"n[3-1]"};
  auto bad = build_job_request(o, "/");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "--exclude");
  EXPECT_NE(bad.error().message.find("--exclude: "), std::string::npos) << bad.error().message;

  ReservationOptions ro;
  ro.name = "demo";
  ro.nodes = {"n[1-3,5]"};
  ro.end = "2030-01-01T00:00:00Z";
  auto body = reservation_body(ro);
  ASSERT_TRUE(body.ok()) << body.error().message;
  EXPECT_EQ((*body)["nodes"], nlohmann::json({"n1", "n2", "n3", "n5"}));
}

}  // namespace
}  // namespace tessel::cli

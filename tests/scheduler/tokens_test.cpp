#include <gtest/gtest.h>

#include <sys/stat.h>

#include "files.hpp"
#include "temp_dir.hpp"
#include "tessel/scheduler/auth.hpp"
#include "tessel/scheduler/tokens.hpp"

namespace tessel::scheduler {
namespace {

TEST(Tokens, ParsesCommentsBlanksAndRoles) {
  auto t = parse_tokens("# comment\n\n  abc admin root  \r\nxyz user alice\n\t\nqqq agent node-1");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->by_token.size(), 3u);
  EXPECT_EQ(t->by_token["xyz"].name, "alice");
  EXPECT_EQ(t->by_token["qqq"].role, Role::agent);
}

TEST(Tokens, BadLinesNameTheLine) {
  auto e1 = parse_tokens("a admin x\nb boss y\n");
  ASSERT_FALSE(e1.ok());
  EXPECT_EQ(e1.error().message.rfind("line 2:", 0), 0u) << e1.error().message;
  auto e2 = parse_tokens("a admin\n");
  ASSERT_FALSE(e2.ok());
  EXPECT_EQ(e2.error().message.rfind("line 1:", 0), 0u);
  auto e3 = parse_tokens("a admin x\na user y\n");
  ASSERT_FALSE(e3.ok());
  EXPECT_NE(e3.error().message.find("duplicate"), std::string::npos);
  EXPECT_FALSE(parse_tokens("# only comments\n").ok());
  EXPECT_FALSE(parse_tokens("a admin x extra more\n").ok());
  EXPECT_FALSE(load_tokens_file("/nonexistent/tokens").ok());
}

TEST(Tokens, AnOpenFileAndShortTokensAreWarnedAboutWithoutQuotingAToken) {
  const testkit::TempDir dir("tessel-tokens");
  const std::string path = dir.str("tokens");
  const std::string strong = "0123456789abcdef0123456789abcdef";
  testkit::write_file(path, "shorty user alice\n" + strong + " admin root\n");
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  auto t = load_tokens_file(path);
  ASSERT_TRUE(t.ok()) << t.error().message;
  auto w = tokens_file_warnings(path, *t);
  ASSERT_EQ(w.size(), 2U);
  EXPECT_NE(w[0].find("mode 0644"), std::string::npos) << w[0];
  EXPECT_NE(w[1].find("user alice has 6 characters"), std::string::npos) << w[1];
  for (const auto& line : w) EXPECT_EQ(line.find("shorty"), std::string::npos) << line;

  testkit::write_file(path, strong + " admin root\n");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  auto safe = load_tokens_file(path);
  ASSERT_TRUE(safe.ok());
  EXPECT_TRUE(tokens_file_warnings(path, *safe).empty());
}

TEST(Auth, RolesMapToActions) {
  Authenticator off(std::nullopt);
  auto anon = off.authorize("", Action::admin);
  ASSERT_TRUE(anon.ok());
  EXPECT_EQ(anon->name, "anonymous");
  Authenticator on(*parse_tokens("u user alice\ng agent n1\na admin root\n"));
  EXPECT_EQ(on.authorize("", Action::read).error().code, ErrorCode::unauthenticated);
  EXPECT_EQ(on.authorize("Bearer nope", Action::read).error().code, ErrorCode::unauthenticated);
  EXPECT_EQ(on.authorize("Bearer u", Action::admin).error().code, ErrorCode::permission_denied);
  EXPECT_EQ(on.authorize("Bearer u", Action::agent).error().code, ErrorCode::permission_denied);
  EXPECT_EQ(on.authorize("Bearer g", Action::read).error().code, ErrorCode::permission_denied);
  EXPECT_TRUE(on.authorize("Bearer u", Action::submit).ok());
  EXPECT_TRUE(on.authorize("Bearer g", Action::agent).ok());
  EXPECT_TRUE(on.authorize("Bearer a", Action::agent).ok());
}

}  // namespace
}  // namespace tessel::scheduler

//===- tests/unit/runtime/StatusTest.cpp - the runtime's error types ------===//

#include "runtime/Status.h"

#include <gtest/gtest.h>

#include <memory>

using namespace planc::runtime;

namespace {

struct Base {
  virtual ~Base() = default;
  virtual int f() const { return 1; }
};
struct Derived : Base {
  int f() const override { return 2; }
};

Result<std::unique_ptr<Base>> make(bool fail) {
  if (fail) return errorStatus("cannot make it: no reason");
  return std::unique_ptr<Base>(new Derived);
}

TEST(StatusTest, StatusAndResult) {
  EXPECT_TRUE(Status().ok());
  EXPECT_EQ(Status::success().message(), "");
  Status e = errorStatus("cannot read 'x': No such file or directory");
  EXPECT_FALSE(e.ok());
  EXPECT_EQ(e.message(), "cannot read 'x': No such file or directory");
  EXPECT_EQ(errorStatus("").message(), "unknown error") << "an error is never silent";

  auto ok = make(false);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ((*ok)->f(), 2);
  EXPECT_EQ(ok.value()->f(), 2);
  EXPECT_EQ(ok.error(), "");
  EXPECT_TRUE(ok.status().ok());
  std::unique_ptr<Base> taken = std::move(ok).value();
  EXPECT_EQ(taken->f(), 2);

  auto bad = make(true);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.error(), "cannot make it: no reason");
  EXPECT_EQ(bad.status().message(), "cannot make it: no reason");

  Result<std::string> s = std::string("text");
  EXPECT_EQ(s->size(), 4u);
  Result<int> fromSuccess = Status::success();
  EXPECT_FALSE(fromSuccess.ok()) << "a success status holds no value";
  EXPECT_NE(fromSuccess.error().find("internal error"), std::string::npos);
}

} // namespace

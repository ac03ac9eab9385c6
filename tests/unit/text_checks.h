// text_checks.h - checks on rendered text (a view, JSON, a message) for the unit tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace dt::test {

// EXPECT_TRUE(contains(text, part)): `text` holds `part`; on failure both are shown.
inline ::testing::AssertionResult contains(const std::string &text, const std::string &part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no\n  " << part << "\nin\n" << text;
}

}  // namespace dt::test

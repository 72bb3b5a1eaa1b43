#include "base/base64.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace mcpexec {
namespace {

// RFC 4648 section 10.
const std::pair<std::string, std::string> kRfcVectors[] = {
    {"", ""},
    {"f", "Zg=="},
    {"fo", "Zm8="},
    {"foo", "Zm9v"},
    {"foob", "Zm9vYg=="},
    {"fooba", "Zm9vYmE="},
    {"foobar", "Zm9vYmFy"},
};

TEST(Base64, EncodesTheRfcVectors) {
  for (const auto& [bytes, text] : kRfcVectors) {
    EXPECT_EQ(Base64Encode(bytes), text) << bytes;
    EXPECT_EQ(Base64Length(bytes.size()), text.size()) << bytes;
  }
}

TEST(Base64, DecodesTheRfcVectors) {
  for (const auto& [bytes, text] : kRfcVectors) {
    const auto decoded = Base64Decode(text);
    ASSERT_TRUE(decoded.has_value()) << text;
    EXPECT_EQ(*decoded, bytes) << text;
  }
}

TEST(Base64, EveryByteValueRoundTrips) {
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  for (size_t len = 0; len <= all.size(); len += 1) {
    const std::string bytes = all.substr(all.size() - len);
    const auto back = Base64Decode(Base64Encode(bytes));
    ASSERT_TRUE(back.has_value()) << len;
    EXPECT_EQ(*back, bytes) << len;
  }
  // The two characters past the letters and digits are '+' and '/' (not '-' and '_').
  EXPECT_EQ(Base64Encode("\xfb\xff"), "+/8=");
  EXPECT_EQ(Base64Decode("+/8="), std::string("\xfb\xff"));
}

TEST(Base64, RefusesCharactersOutsideTheAlphabet) {
  for (const std::string& text : std::vector<std::string>{"Zm-v", "Zm_v", "Zm9!", "Zm9v\xc3\xa9Zg",
                                                          std::string("Zm9\0", 4), "Zm.v"}) {
    EXPECT_FALSE(Base64Decode(text).has_value()) << text;
  }
}

TEST(Base64, RefusesWhitespace) {
  for (const std::string text : {" Zm9v", "Zm9v ", "Zm9v\nZm9v", "Zm9v\r\n", "Zm\t9v", "Zm 9"}) {
    EXPECT_FALSE(Base64Decode(text).has_value()) << text;
  }
}

TEST(Base64, RefusesALengthThatIsNotAMultipleOfFour) {
  for (const std::string text : {"Z", "Zg", "Zg=", "Zm9", "Zm9vY", "Zm9vYg=", "Zm9vYg==="}) {
    EXPECT_FALSE(Base64Decode(text).has_value()) << text;
  }
}

TEST(Base64, RefusesPaddingAnywhereButAtTheEnd) {
  for (const std::string text : {"Zg==Zm9v", "Zm8=Zm9v", "=Zm9", "Z=9v", "Zm=v", "Zg=A",
                                 "Z===", "====", "A===", "Zm9vZg==Zg=="}) {
    EXPECT_FALSE(Base64Decode(text).has_value()) << text;
  }
}

// RFC 4648 section 3.5: the bits the padding leaves over are zero in a canonical encoding. "Zh=="
// and "Zm9=" decode to the same bytes as "Zg==" and "Zm8=" in a lax decoder.
TEST(Base64, RefusesNonZeroPadBits) {
  for (const std::string text : {"Zh==", "Zv==", "Z/==", "Zm9=", "Zm/=", "Zm9vYh==", "Zm9vYmF="}) {
    EXPECT_FALSE(Base64Decode(text).has_value()) << text;
  }
  EXPECT_EQ(Base64Decode("Zg=="), std::string("f"));
  EXPECT_EQ(Base64Decode("Zm8="), std::string("fo"));
}

}  // namespace
}  // namespace mcpexec

// The `files` argument as the tool contract has it, and what /tmp/outputs held as the MCP
// result shows it: reports, MIME types, uris, and which files fit in the result.
#include "exec/files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "base/base64.h"

namespace mcpexec::exec {
namespace {

using nlohmann::json;
using sandbox::InputFile;
using sandbox::OutputCollection;
using sandbox::OutputFile;
using sandbox::OutputSkip;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kPngMagic("\x89PNG\r\n\x1a\n", 8);

// A PNG header whose IHDR claims 100000 x 100000 pixels (40 GB decoded), with nothing behind it.
std::string LyingPng() {
  std::string png = kPngMagic;
  png += std::string("\x00\x00\x00\x0dIHDR", 8);
  png += std::string("\x00\x01\x86\xa0\x00\x01\x86\xa0\x08\x06\x00\x00\x00", 13);
  png += std::string("\x00\x00\x00\x00", 4);  // a CRC nobody checks
  return png;
}

// ----------------------------------------------------------------------------- ParseInputFiles

std::string ParseError(const json& files) {
  auto r = ParseInputFiles(files);
  EXPECT_FALSE(r.ok()) << files;
  return r.ok() ? "" : r.error().message;
}

TEST(ParseInputFiles, ReadsPathContentAndEncoding) {
  const json files = json::array({
      {{"path", "in.csv"}, {"content", "a,b\n"}},
      {{"path", "data/x.bin"}, {"content", "AP+AAQ=="}, {"encoding", "base64"}},
      {{"path", "t.txt"}, {"content", "caf\xc3\xa9"}, {"encoding", "utf-8"}},
  });
  auto r = ParseInputFiles(files);
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 3u);
  EXPECT_EQ((*r)[0].path, "in.csv");
  EXPECT_EQ((*r)[0].content, "a,b\n");
  EXPECT_EQ((*r)[1].path, "data/x.bin");
  EXPECT_EQ((*r)[1].content, std::string("\x00\xff\x80\x01", 4));
  EXPECT_EQ((*r)[2].content, "caf\xc3\xa9");
  EXPECT_TRUE(ParseInputFiles(json::array())->empty());
}

TEST(ParseInputFiles, MessagesNameTheEntry) {
  EXPECT_THAT(ParseError("in.csv"),
              HasSubstr("files must be an array of {path, content, encoding}"));
  EXPECT_THAT(ParseError(json::object()), HasSubstr("files must be an array"));
  const json ok = {{"path", "ok.txt"}, {"content", ""}};
  EXPECT_THAT(ParseError({ok, "in.csv"}), HasSubstr("files[1]: must be an object"));
  EXPECT_THAT(ParseError({ok, ok, {{"content", "x"}}}),
              HasSubstr("files[2]: path is required and must be a string"));
  EXPECT_THAT(ParseError({{{"path", 7}, {"content", "x"}}}),
              HasSubstr("files[0]: path is required and must be a string"));
  EXPECT_THAT(ParseError({{{"path", "a.txt"}}}),
              HasSubstr("files[0] (\"a.txt\"): content is required and must be a string"));
  EXPECT_THAT(ParseError({{{"path", "a.txt"}, {"content", json::array({1})}}}),
              HasSubstr("files[0] (\"a.txt\"): content is required"));
  EXPECT_THAT(ParseError({{{"path", "a.txt"}, {"content", "x"}, {"mode", 493}}}),
              HasSubstr("files[0] (\"a.txt\"): unknown field 'mode'"));
  for (const json& encoding : {json("hex"), json("UTF-8"), json(64)}) {
    EXPECT_THAT(ParseError({{{"path", "a.txt"}, {"content", "x"}, {"encoding", encoding}}}),
                HasSubstr("files[0] (\"a.txt\"): encoding must be \"utf-8\" (the default) or "
                          "\"base64\""))
        << encoding;
  }
}


TEST(ParseInputFiles, InvalidBase64IsRefused) {
  for (const char* content : {"Zm9v Zg==", "Zg=", "Zh==", "Zg==Zg==", "Zm9v\n", "%%%%"}) {
    EXPECT_THAT(ParseError({{{"path", "x.bin"}, {"content", content}, {"encoding", "base64"}}}),
                HasSubstr("files[0] (\"x.bin\"): content is not valid base64"))
        << content;
  }
}

// --------------------------------------------------------------------------- ValidateInputFiles

config::Config SmallLimits() {
  config::Config c = config::Defaults("/r");
  c.max_input_files = 3;
  c.max_input_file_bytes = 10;
  c.workspace_bytes = 25;
  return c;
}

std::string ValidateError(const config::Config& c, const std::vector<InputFile>& files) {
  auto r = ValidateInputFiles(c, files);
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().message;
}

TEST(ValidateInputFiles, AtTheLimitsIsValid) {
  const config::Config c = SmallLimits();
  EXPECT_TRUE(ValidateInputFiles(c, {}).ok());
  EXPECT_TRUE(ValidateInputFiles(c, {{"a", std::string(10, 'a')},
                                     {"b/c", std::string(10, 'b')},
                                     {"b/d", std::string(5, 'c')}})
                  .ok());
}

TEST(ValidateInputFiles, MessagesNameTheEntryAndTheVariable) {
  const config::Config c = SmallLimits();
  EXPECT_THAT(ValidateError(c, {{"a", ""}, {"b", ""}, {"c", ""}, {"d", ""}}),
              AllOf(HasSubstr("4 input files, over the limit of 3"),
                    HasSubstr("MCP_EXEC_MAX_INPUT_FILES")));
  EXPECT_THAT(ValidateError(c, {{"a", ""}, {"big.bin", std::string(11, 'x')}}),
              AllOf(HasSubstr("files[1] (\"big.bin\"): 11 bytes, over the limit of 10"),
                    HasSubstr("MCP_EXEC_MAX_INPUT_FILE_BYTES")));
  EXPECT_THAT(ValidateError(c, {{"a", std::string(10, 'a')},
                                {"b", std::string(10, 'b')},
                                {"c", std::string(6, 'c')}}),
              AllOf(HasSubstr("26 bytes"), HasSubstr("MCP_EXEC_WORKSPACE_BYTES")));
  EXPECT_THAT(ValidateError(c, {{"a", ""}, {"a", "again"}}),
              HasSubstr("files[1] (\"a\"): the path is given twice"));
  EXPECT_THAT(ValidateError(c, {{"d/x", ""}, {"d", ""}}),
              HasSubstr("input file \"d\" is also a directory of \"d/x\""));
  EXPECT_THAT(ValidateError(c, {{"d", ""}, {"d/e/f", ""}}),
              HasSubstr("input file \"d\" is also a directory of \"d/e/f\""));
  // Paths are checked here only, whether they came in the argument or from `run --input`.
  EXPECT_THAT(ValidateError(c, {{"main.py", ""}}),
              HasSubstr("files[0] (\"main.py\"): main.py is the program itself"));
  EXPECT_THAT(ValidateError(c, {{"", ""}}), HasSubstr("files[0] (\"\"): the path is empty"));
  // The path is quoted as JSON, so a newline in it does not break the message.
  EXPECT_THAT(ValidateError(c, {{"a\nb", ""}}),
              HasSubstr("files[0] (\"a\\nb\"): the path holds a NUL or control character"));
  EXPECT_THAT(ValidateError(c, {{"ok", ""}, {"../escape", ""}}),
              HasSubstr("files[1] (\"../escape\"): the path has a \".\" or \"..\" component"));
  EXPECT_THAT(ValidateError(c, {{"/etc/cron.d/x", ""}}),
              HasSubstr("files[0] (\"/etc/cron.d/x\"): the path is absolute"));
  EXPECT_THAT(ValidateError(c, {{"bad\xff/..", ""}}),
              HasSubstr("files[0] (\"bad\xef\xbf\xbd/..\"): the path"))
      << "a path that is not UTF-8 is shown repaired";
}

// ------------------------------------------------------------------------------- MIME types

OutputFile Read(const std::string& path, const std::string& data) {
  return OutputFile{path, "file", data.size(), OutputSkip::kNone, data};
}

OutputFile Skipped(const std::string& path, OutputSkip skip, const std::string& type = "file",
                   uint64_t size = 0) {
  return OutputFile{path, type, size, skip, ""};
}

TEST(ImageMimeType, ComesFromTheMagicBytes) {
  EXPECT_EQ(ImageMimeType(kPngMagic), "image/png");
  EXPECT_EQ(ImageMimeType(LyingPng()), "image/png");
  EXPECT_EQ(ImageMimeType("\xff\xd8\xff\xe0rest"), "image/jpeg");
  EXPECT_EQ(ImageMimeType("GIF87a..."), "image/gif");
  EXPECT_EQ(ImageMimeType("GIF89a..."), "image/gif");
  EXPECT_EQ(ImageMimeType(std::string("RIFF\x10\x00\x00\x00WEBPVP8 ", 16)), "image/webp");
  for (const std::string& not_image :
       {std::string(), kPngMagic.substr(0, 7), std::string("\xff\xd8"), std::string("GIF88a"),
        std::string("RIFF\x10\x00\x00\x00WAVEfmt ", 16), std::string("RIFF\x10\x00\x00\x00WEB", 11),
        std::string("<svg xmlns=\"http://www.w3.org/2000/svg\"/>"), std::string("PNG")}) {
    EXPECT_EQ(ImageMimeType(not_image), "") << not_image;
  }
}

TEST(MimeTypeOf, ImagesFromTheirBytesOthersFromTheirName) {
  EXPECT_EQ(MimeTypeOf("plot.png", Read("plot.png", kPngMagic + "data")), "image/png");
  EXPECT_EQ(MimeTypeOf("plot", Read("plot", "GIF89a")), "image/gif");
  // A .png that is not a PNG is not announced as an image.
  EXPECT_EQ(MimeTypeOf("plot.png", Read("plot.png", "just text")), "text/plain");
  EXPECT_EQ(MimeTypeOf("plot.png", Read("plot.png", std::string("\x00\x01", 2))),
            "application/octet-stream");
  EXPECT_EQ(MimeTypeOf("data.csv", Read("data.csv", "a,b\n")), "text/csv");
  EXPECT_EQ(MimeTypeOf("DATA.CSV", Read("DATA.CSV", "a,b\n")), "text/csv");
  EXPECT_EQ(MimeTypeOf("r.json", Read("r.json", "{}")), "application/json");
  EXPECT_EQ(MimeTypeOf("notes", Read("notes", "plain words")), "text/plain");
  EXPECT_EQ(MimeTypeOf("blob", Read("blob", "\xff\xfe")), "application/octet-stream");
  // By name, svg is image/*; it is XML text, never returned as an image item (below).
  EXPECT_EQ(MimeTypeOf("f.svg", Read("f.svg", "<svg/>")), "image/svg+xml");
  // Not read: only the name can tell, and a name never makes an image.
  EXPECT_EQ(MimeTypeOf("big.csv", Skipped("big.csv", OutputSkip::kTooLarge)), "text/csv");
  EXPECT_EQ(MimeTypeOf("big.png", Skipped("big.png", OutputSkip::kTooLarge)),
            "application/octet-stream");
  EXPECT_EQ(MimeTypeOf("plot.png", Skipped("plot.png", OutputSkip::kNotRegular, "symlink")), "");
  EXPECT_EQ(MimeTypeOf("d", Skipped("d", OutputSkip::kTooDeep, "directory")), "");
}

TEST(OutputUri, PercentEncodesAllButUnreservedCharactersAndSlashes) {
  EXPECT_EQ(OutputUri("plot.png"), "mcp-exec:///tmp/outputs/plot.png");
  EXPECT_EQ(OutputUri("sub/dir/A-z_0.9~"), "mcp-exec:///tmp/outputs/sub/dir/A-z_0.9~");
  EXPECT_EQ(OutputUri("my plot.png"), "mcp-exec:///tmp/outputs/my%20plot.png");
  EXPECT_EQ(OutputUri("two\nlines"), "mcp-exec:///tmp/outputs/two%0Alines");
  EXPECT_EQ(OutputUri("bad\xff\xfe"), "mcp-exec:///tmp/outputs/bad%FF%FE");
  EXPECT_EQ(OutputUri("caf\xc3\xa9"), "mcp-exec:///tmp/outputs/caf%C3%A9");
  EXPECT_EQ(OutputUri("100%?#&+=:@"), "mcp-exec:///tmp/outputs/100%25%3F%23%26%2B%3D%3A%40");
}

// ------------------------------------------------------------------- reports and the result

TEST(ReportOutputs, EveryListedFileWithItsReason) {
  config::Config c = config::Defaults("/r");
  OutputCollection outputs;
  outputs.files = {Read("ok.txt", "ok"),
                   Skipped("plot.png", OutputSkip::kNotRegular, "symlink"),
                   Skipped("out.csv", OutputSkip::kNotRegular, "fifo"),
                   Skipped("huge.bin", OutputSkip::kTooLarge, "file", 10ull << 30),
                   Skipped("f17", OutputSkip::kTooMany, "file", 3),
                   Skipped("secret", OutputSkip::kUnreadable),
                   Skipped("d/d/d", OutputSkip::kTooDeep, "directory"),
                   Read("bad\xff.txt", "x"),
                   Skipped("swapped", OutputSkip::kChanged)};
  const std::vector<FileReport> r = ReportOutputs(c, outputs, "waiting for delivery");
  ASSERT_EQ(r.size(), outputs.files.size());
  EXPECT_EQ(r[0].reason, "waiting for delivery");
  EXPECT_EQ(r[0].mime_type, "text/plain");
  EXPECT_EQ(r[1].reason, "not a regular file (symlink)");
  EXPECT_EQ(r[1].mime_type, "");
  EXPECT_EQ(r[2].reason, "not a regular file (fifo)");
  EXPECT_THAT(r[3].reason,
              AllOf(HasSubstr("MCP_EXEC_MAX_OUTPUT_FILE_BYTES"), HasSubstr("1048576 bytes")));
  EXPECT_EQ(r[3].size, 10ull << 30);
  EXPECT_THAT(r[4].reason, AllOf(HasSubstr("MCP_EXEC_MAX_OUTPUT_FILES"), HasSubstr("(16)")));
  EXPECT_THAT(r[5].reason, HasSubstr("unreadable"));
  EXPECT_THAT(r[6].reason, HasSubstr("deeper than 32 levels"));
  EXPECT_EQ(r[7].path, "bad\xef\xbf\xbd.txt");
  EXPECT_THAT(r[8].reason, HasSubstr("changed while the server read it"));
  for (const FileReport& report : r) EXPECT_FALSE(report.returned) << report.path;

  json result = json::object();
  outputs.unlisted = 7;
  outputs.walk_incomplete = true;
  AddFilesJson(r, outputs, result);
  ASSERT_EQ(result["files"].size(), outputs.files.size());
  EXPECT_EQ(result["files"][1], json({{"path", "plot.png"},
                                      {"size", 0},
                                      {"mime_type", nullptr},
                                      {"returned", false},
                                      {"reason", "not a regular file (symlink)"}}));
  EXPECT_EQ(result["files_not_listed"], 7);
  EXPECT_EQ(result["files_walk_incomplete"], true);
  EXPECT_NO_THROW(result.dump()) << "every string is valid UTF-8";

  json plain = json::object();
  AddFilesJson({}, OutputCollection{}, plain);
  EXPECT_EQ(plain, json({{"files", json::array()}}));
}

// Content for each read file, in order, and the reports marked.
struct Delivery {
  json items;
  std::vector<FileReport> reports;
};

Delivery Deliver(const OutputCollection& outputs, size_t budget) {
  Delivery d;
  d.reports = ReportOutputs(config::Defaults("/r"), outputs, "no room");
  d.items = OutputContent(outputs, d.reports, budget);
  return d;
}

size_t Size(const json& items) {
  size_t n = 0;
  for (const json& item : items) n += item.dump().size() + 1;
  return n;
}

TEST(OutputContent, ImagesTextAndBlobs) {
  OutputCollection outputs;
  const std::string png = kPngMagic + std::string("\x00\x00\x00\x0dIHDR", 8);
  const std::string binary("\x00\x01\x02\xff", 4);
  outputs.files = {Read("plot.png", png),
                   Read("table.csv", "a,b\n1,\"2\"\n"),
                   Read("raw.bin", binary),
                   Read("latin1.txt", "caf\xe9"),
                   Read("fake.png", "not a png at all"),
                   Read("pic.svg", "<svg/>"),
                   Skipped("link.png", OutputSkip::kNotRegular, "symlink")};
  const Delivery d = Deliver(outputs, 1'000'000);
  ASSERT_EQ(d.items.size(), 6u) << d.items;
  EXPECT_EQ(d.items[0],
            json({{"type", "image"}, {"data", Base64Encode(png)}, {"mimeType", "image/png"}}));
  EXPECT_EQ(d.items[1], json({{"type", "resource"},
                              {"resource",
                               {{"uri", "mcp-exec:///tmp/outputs/table.csv"},
                                {"mimeType", "text/csv"},
                                {"text", "a,b\n1,\"2\"\n"}}}}));
  EXPECT_EQ(d.items[2]["resource"], json({{"uri", "mcp-exec:///tmp/outputs/raw.bin"},
                                          {"mimeType", "application/octet-stream"},
                                          {"blob", Base64Encode(binary)}}));
  EXPECT_EQ(*Base64Decode(d.items[2]["resource"]["blob"].get<std::string>()), binary);
  // Not UTF-8: a blob, byte for byte.
  EXPECT_EQ(d.items[3]["resource"]["blob"], Base64Encode("caf\xe9"));
  // Named .png, not a PNG: text, not an image.
  EXPECT_EQ(d.items[4]["type"], "resource");
  EXPECT_EQ(d.items[4]["resource"]["mimeType"], "text/plain");
  EXPECT_EQ(d.items[4]["resource"]["text"], "not a png at all");
  EXPECT_EQ(d.items[5]["type"], "resource");
  EXPECT_EQ(d.items[5]["resource"]["mimeType"], "image/svg+xml");
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_TRUE(d.reports[i].returned) << i;
    EXPECT_EQ(d.reports[i].reason, "") << i;
  }
  EXPECT_FALSE(d.reports[6].returned);
  EXPECT_EQ(d.reports[6].reason, "not a regular file (symlink)");
}

// The image's bytes are never decoded: the header that claims 100000 x 100000 pixels comes back
// as it was written.
TEST(OutputContent, AnImageIsReturnedAsItsBytes) {
  OutputCollection outputs;
  outputs.files = {Read("bomb.png", LyingPng())};
  const Delivery d = Deliver(outputs, 1'000'000);
  ASSERT_EQ(d.items.size(), 1u);
  EXPECT_EQ(d.items[0]["type"], "image");
  EXPECT_EQ(*Base64Decode(d.items[0]["data"].get<std::string>()), LyingPng());
}

TEST(OutputContent, FilesThatDoNotFitAreNotReturnedALaterSmallerOneMayBe) {
  OutputCollection outputs;
  outputs.files = {Read("big.txt", std::string(5000, 't')),
                   Read("big.bin", std::string(3000, '\0')), Read("small.txt", "small"),
                   Read("tiny.bin", std::string(1, '\0'))};
  const Delivery all = Deliver(outputs, 1'000'000);
  ASSERT_EQ(all.items.size(), 4u);
  const size_t small_size = all.items[2].dump().size() + 1;
  const size_t tiny_size = all.items[3].dump().size() + 1;

  const Delivery d = Deliver(outputs, 2000);
  ASSERT_EQ(d.items.size(), 2u) << d.items;
  EXPECT_EQ(d.items[0]["resource"]["text"], "small");
  EXPECT_EQ(d.items[1]["resource"]["blob"], "AA==");
  EXPECT_LE(Size(d.items), 2000u);
  EXPECT_FALSE(d.reports[0].returned);
  EXPECT_EQ(d.reports[0].reason, "no room");
  EXPECT_FALSE(d.reports[1].returned);
  EXPECT_EQ(d.reports[1].reason, "no room");
  EXPECT_TRUE(d.reports[2].returned);
  EXPECT_TRUE(d.reports[3].returned);

  // The budget is exact: what just fits is returned, one byte less and it is not.
  const Delivery exact = Deliver(outputs, small_size + tiny_size);
  EXPECT_EQ(exact.items.size(), 2u);
  const Delivery short_by_one = Deliver(outputs, small_size + tiny_size - 1);
  ASSERT_EQ(short_by_one.items.size(), 1u);
  EXPECT_EQ(short_by_one.items[0]["resource"]["text"], "small");
  EXPECT_FALSE(short_by_one.reports[3].returned);

  const Delivery none = Deliver(outputs, 0);
  EXPECT_TRUE(none.items.empty());
  for (const FileReport& r : none.reports) EXPECT_EQ(r.reason, "no room") << r.path;
}

// Text is counted as JSON writes it: a file of newlines takes twice its size.
TEST(OutputContent, TextIsMeasuredEscaped) {
  OutputCollection outputs;
  outputs.files = {Read("lines.txt", std::string(1000, '\n'))};
  const Delivery all = Deliver(outputs, 1'000'000);
  ASSERT_EQ(all.items.size(), 1u);
  const size_t size = all.items[0].dump().size() + 1;
  EXPECT_GT(size, 2000u);
  EXPECT_EQ(Deliver(outputs, size).items.size(), 1u);
  EXPECT_EQ(Deliver(outputs, size - 1).items.size(), 0u);
  EXPECT_EQ(Deliver(outputs, 1500).items.size(), 0u);
}

}  // namespace
}  // namespace mcpexec::exec

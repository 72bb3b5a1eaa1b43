// Packages on demand, the parts that need no sandbox: the `packages` argument's requirements,
// the allow-list setting, the layer's files as the supervisor writes them from the installer's
// workspace, and the digest that names layers.
#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/unique_fd.h"
#include "config/config.h"
#include "exec/packages_config.h"
#include "packages/digest.h"
#include "packages/index_channel.h"
#include "packages/index_client.h"
#include "packages/index_page.h"
#include "packages/layer_tree.h"
#include "packages/requirements.h"

namespace mcpexec::packages {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(std::string_view text) {
  auto r = ParseRequirement(text);
  return r.ok() ? "" : r.error().message;
}

TEST(Requirements, NamesAreNormalisedAsPep503Says) {
  EXPECT_EQ(NormalizeName("Python_DateUtil"), "python-dateutil");
  EXPECT_EQ(NormalizeName("MCPX_Odd.Name"), "mcpx-odd-name");
  EXPECT_EQ(NormalizeName("a-_.b"), "a-b");
}

TEST(Requirements, NameVersionsExtrasAndMarkersAreAccepted) {
  for (const char* ok : {"tabulate", "python-dateutil==2.8.2", "pkg>=1,<2", "pkg ( >=1 , <2 )",
                         "pkg[extra1,extra2]~=3.1", "pkg===1.0", "pkg!=1.*",
                         "pkg; python_version >= '3.8'", "  pkg  "}) {
    auto r = ParseRequirement(ok);
    ASSERT_TRUE(r.ok()) << ok << ": " << r.error().message;
  }
  auto r = ParseRequirement("  Python_DateUtil >= 2.8 ");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->name, "python-dateutil");
  EXPECT_EQ(r->text, "Python_DateUtil >= 2.8");
  EXPECT_EQ(r->key, "python-dateutil>=2.8");
  EXPECT_EQ(ParseRequirement("python-dateutil>=2.8")->key, r->key);
}

TEST(Requirements, UrlsPathsOptionsAndMalformedOnesAreRefusedWithTheReason) {
  EXPECT_THAT(ErrorOf("foo @ https://example.com/foo.whl"), HasSubstr("URL"));
  EXPECT_THAT(ErrorOf("git+https://example.com/foo"), HasSubstr("URL"));
  EXPECT_THAT(ErrorOf("foo@file:///x"), HasSubstr("URL"));
  EXPECT_THAT(ErrorOf("-e ."), HasSubstr("editable"));
  EXPECT_THAT(ErrorOf("--index-url=http://x"), HasSubstr("option"));
  EXPECT_THAT(ErrorOf("./foo"), HasSubstr("no paths"));
  EXPECT_THAT(ErrorOf("/etc/passwd"), HasSubstr("no paths"));
  EXPECT_THAT(ErrorOf("foo.whl"), HasSubstr("archive"));
  EXPECT_THAT(ErrorOf("foo-1.0.tar.gz"), HasSubstr("archive"));
  EXPECT_THAT(ErrorOf(""), HasSubstr("empty"));
  EXPECT_THAT(ErrorOf("foo==="), HasSubstr("specifier"));
  EXPECT_THAT(ErrorOf("foo=="), HasSubstr("specifier"));
  EXPECT_THAT(ErrorOf("foo 1.0"), HasSubstr("specifier"));
  EXPECT_THAT(ErrorOf("foo;"), HasSubstr("marker"));
  EXPECT_THAT(ErrorOf("foo[bar"), HasSubstr("'['"));
  EXPECT_THAT(ErrorOf("foo\nbar"), HasSubstr("control character"));
  EXPECT_THAT(ErrorOf(std::string(300, 'a')), HasSubstr("longer than 256"));
  EXPECT_THAT(ErrorOf("-foo"), HasSubstr("option"));
  EXPECT_THAT(ErrorOf("foo; os.system('x') $"), HasSubstr("marker"));
  for (const char* bad : {"foo @ https://x/y.whl", "-e .", "foo==="}) {
    EXPECT_THAT(ErrorOf(bad), HasSubstr("packages:")) << bad;
  }
}

TEST(PackagesConfig, AllowListIsNormalisedAndRefusesWhatIsNotAName) {
  config::Config c;
  c.wheelhouse = "/srv/wheels";
  c.package_allow = " Tabulate, python_dateutil ,,";
  auto options = exec::PackageStoreOptionsFor(c);
  ASSERT_TRUE(options.ok()) << options.error().message;
  EXPECT_EQ(options->allow, (std::vector<std::string>{"tabulate", "python-dateutil"}));
  c.package_allow = "tabulate==1.0";
  EXPECT_FALSE(exec::PackageStoreOptionsFor(c).ok());
  c.package_allow = "";
  c.package_cache = "";
  EXPECT_EQ(exec::PackageStoreOptionsFor(c)->cache_dir, exec::PackageCacheDefault());
}

TEST(Digest, Sha256OfDataAndOfAFile) {
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  char dir_template[] = "/tmp/mcp-exec-digest-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  { std::ofstream(dir + "/f") << "abc"; }
  UniqueFd fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  EXPECT_EQ(*Sha256OfFile(fd.Get(), "f"), Sha256Hex("abc"));
  ASSERT_EQ(symlink("f", (dir + "/link").c_str()), 0);
  EXPECT_FALSE(Sha256OfFile(fd.Get(), "link").ok());
  ASSERT_EQ(mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(Sha256OfFile(fd.Get(), "fifo").ok());
  std::filesystem::remove_all(dir);
}

class LayerTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir_template[] = "/tmp/mcp-exec-layer-XXXXXX";
    root_ = mkdtemp(dir_template);
    dir_ = root_ + "/site";
    ASSERT_EQ(mkdir(dir_.c_str(), 0755), 0);
  }
  void TearDown() override { ASSERT_TRUE(RemoveTree(root_).ok()); }
  static sandbox::OutputFile File(std::string path, std::string data) {
    sandbox::OutputFile f;
    f.path = std::move(path);
    f.type = "file";
    f.size = data.size();
    f.data = std::move(data);
    return f;
  }
  std::string root_, dir_;
};

TEST_F(LayerTreeTest, WritesTheFilesReadOnlyWithTheirDirectories) {
  sandbox::OutputCollection c;
  c.files = {File("site/pkg/__init__.py", "VALUE = 1\n"), File("site/pkg/sub/m.py", "x"),
             File("other/ignored.txt", "no")};
  ASSERT_TRUE(WriteLayerTree(c, "site", dir_).ok());
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/pkg/__init__.py").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0444u);
  ASSERT_EQ(stat((dir_ + "/pkg/sub").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  ASSERT_EQ(stat(dir_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0555u);
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/ignored.txt"));
  EXPECT_FALSE(std::filesystem::exists(root_ + "/other"));
}

TEST_F(LayerTreeTest, RefusesLinksSpecialFilesUnreadFilesAndPathsThatAreNotPlain) {
  auto refused = [this](sandbox::OutputFile f) {
    sandbox::OutputCollection c;
    c.files = {std::move(f)};
    auto r = WriteLayerTree(c, "site", dir_);
    return r.ok() ? std::string() : r.error().message;
  };
  sandbox::OutputFile link = File("site/evil", "");
  link.type = "symlink";
  link.skip = sandbox::OutputSkip::kNotRegular;
  EXPECT_THAT(refused(link), HasSubstr("symlink: evil"));
  sandbox::OutputFile device = File("site/dev", "");
  device.type = "device";
  EXPECT_THAT(refused(device), HasSubstr("device"));
  sandbox::OutputFile big = File("site/big", "");
  big.skip = sandbox::OutputSkip::kTooLarge;
  EXPECT_THAT(refused(big), HasSubstr("MCP_EXEC_PACKAGE_MAX_BYTES"));
  EXPECT_THAT(refused(File("site/../x", "")), HasSubstr("not plain"));
  EXPECT_THAT(refused(File("site//x", "")), HasSubstr("not plain"));
  EXPECT_THAT(refused(File("site/a/./x", "")), HasSubstr("not plain"));
  sandbox::OutputCollection incomplete;
  incomplete.walk_incomplete = true;
  EXPECT_FALSE(WriteLayerTree(incomplete, "site", dir_).ok());
  sandbox::OutputCollection unlisted;
  unlisted.unlisted = 1;
  EXPECT_FALSE(WriteLayerTree(unlisted, "site", dir_).ok());
}

TEST_F(LayerTreeTest, RemoveTreeRemovesAReadOnlyTree) {
  sandbox::OutputCollection c;
  c.files = {File("site/a/b/c.py", "x")};
  ASSERT_TRUE(WriteLayerTree(c, "site", dir_).ok());
  ASSERT_TRUE(RemoveTree(dir_).ok());
  EXPECT_FALSE(std::filesystem::exists(dir_));
  EXPECT_TRUE(RemoveTree(dir_).ok());
}

}  // namespace
}  // namespace mcpexec::packages

namespace mcpexec::packages {
namespace {

TEST(IndexPage, UrlsResolveAsBrowsersDo) {
  const std::string page = "https://pypi.example.com/simple/tabulate/";
  EXPECT_EQ(ResolveUrl(page, "../../files/t-1.whl#sha256=ab"),
            "https://pypi.example.com/files/t-1.whl#sha256=ab");
  EXPECT_EQ(ResolveUrl(page, "/packages/t-1.whl"), "https://pypi.example.com/packages/t-1.whl");
  EXPECT_EQ(ResolveUrl(page, "t-1.whl"), "https://pypi.example.com/simple/tabulate/t-1.whl");
  EXPECT_EQ(ResolveUrl(page, "./t-1.whl"), "https://pypi.example.com/simple/tabulate/t-1.whl");
  EXPECT_EQ(ResolveUrl(page, "//files.example.com/t-1.whl"), "https://files.example.com/t-1.whl");
  EXPECT_EQ(ResolveUrl(page, "https://other.example.com/t.whl"), "https://other.example.com/t.whl");
  EXPECT_EQ(ResolveUrl(page, "../../../../x"), "https://pypi.example.com/x");
}

TEST(IndexPage, OriginsCompareSchemeHostAndPort) {
  EXPECT_EQ(OriginOf("https://Pypi.Example.com:443/simple/"), "https://pypi.example.com");
  EXPECT_EQ(OriginOf("https://127.0.0.1:8443/simple/x/"), "https://127.0.0.1:8443");
  EXPECT_NE(OriginOf("https://127.0.0.2:8443/"), OriginOf("https://127.0.0.1:8443/"));
  EXPECT_EQ(OriginOf("https://user:pw@host/"), "");
  EXPECT_EQ(OriginOf("file:///etc/passwd"), "");
  EXPECT_EQ(OriginOf("/relative"), "");
}

TEST(IndexPage, Pep503AnchorsGiveFilesHashesAndAttributes) {
  const std::string sha(64, 'a');
  const std::string html =
      "<!DOCTYPE html><html><body>\n"
      "<a href=\"../../files/t-1.0-py3-none-any.whl#sha256=" + sha +
      "\" data-requires-python=\"&gt;=3.7\">t-1.0-py3-none-any.whl</a><br/>\n"
      "<A HREF='/files/t-0.9.tar.gz' data-yanked>t-0.9.tar.gz</A>\n"
      "<a href=\"t-2.whl#sha256=nothex\">t-2.whl</a>\n"
      "</body></html>";
  auto files = ParseIndexPage(html, "text/html", "https://i.example/simple/t/");
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 3u);
  EXPECT_EQ((*files)[0].filename, "t-1.0-py3-none-any.whl");
  EXPECT_EQ((*files)[0].url, "https://i.example/files/t-1.0-py3-none-any.whl");
  EXPECT_EQ((*files)[0].sha256, sha);
  EXPECT_EQ((*files)[0].requires_python, ">=3.7");
  EXPECT_TRUE((*files)[1].yanked);
  EXPECT_EQ((*files)[1].sha256, "");
  EXPECT_EQ((*files)[2].sha256, "");  // not a sha256: as if none
}

TEST(IndexPage, Pep691JsonGivesTheSame) {
  const std::string sha(64, 'b');
  const std::string body = R"({"meta": {"api-version": "1.0"}, "name": "t", "files": [
      {"filename": "t-1.whl", "url": "../../files/t-1.whl", "hashes": {"sha256": ")" + sha +
                           R"("}, "requires-python": ">=3.8", "yanked": "broken"},
      {"filename": "t-2.whl", "url": "https://i.example/files/t-2.whl", "hashes": {}}]})";
  auto files = ParseIndexPage(body, "application/vnd.pypi.simple.v1+json",
                              "https://i.example/simple/t/");
  ASSERT_TRUE(files.ok()) << files.error().message;
  ASSERT_EQ(files->size(), 2u);
  EXPECT_EQ((*files)[0].url, "https://i.example/files/t-1.whl");
  EXPECT_EQ((*files)[0].sha256, sha);
  EXPECT_TRUE((*files)[0].yanked);
  EXPECT_EQ((*files)[0].yanked_reason, "broken");
  EXPECT_EQ((*files)[1].sha256, "");
  EXPECT_FALSE(ParseIndexPage("{}", "application/vnd.pypi.simple.v1+json", "https://i/").ok());
}

TEST(IndexPage, TheRenderedPageListsOnlyCheckableFilesPointingAtTheChannel) {
  std::vector<IndexFile> files(2);
  files[0].filename = "t-1.whl";
  files[0].sha256 = std::string(64, 'c');
  files[0].requires_python = ">=3.7";
  files[1].filename = "t-2.whl";  // no sha256
  const std::string page = RenderIndexPage(files, "/files/");
  EXPECT_THAT(page, HasSubstr("href=\"/files/" + files[0].sha256 + "/t-1.whl#sha256=" +
                              files[0].sha256 + "\""));
  EXPECT_THAT(page, HasSubstr("data-requires-python=\"&gt;=3.7\""));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("t-2.whl")));
  auto back = ParseIndexPage(page, "text/html", "http://127.0.0.1:1/simple/t/");
  ASSERT_TRUE(back.ok());
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ((*back)[0].requires_python, ">=3.7");
}

TEST(IndexOptions, HttpsOnlyAndCredentialsFromAPrivateFile) {
  EXPECT_FALSE(ReadIndexOptions("http://i.example/simple/", "", "", std::chrono::seconds(1)).ok());
  EXPECT_FALSE(ReadIndexOptions("file:///srv/index", "", "", std::chrono::seconds(1)).ok());
  auto ok = ReadIndexOptions("https://i.example/simple", "", "", std::chrono::seconds(1));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->url, "https://i.example/simple/");
  char dir_template[] = "/tmp/mcp-exec-cred-XXXXXX";
  const std::string dir = mkdtemp(dir_template);
  const std::string file = dir + "/credentials";
  { std::ofstream(file) << "user:secret\n"; }
  chmod(file.c_str(), 0644);
  auto open_file = ReadIndexOptions("https://i.example/", "", file, std::chrono::seconds(1));
  ASSERT_FALSE(open_file.ok());
  EXPECT_THAT(open_file.error().message, HasSubstr("chmod 600"));
  chmod(file.c_str(), 0600);
  auto read = ReadIndexOptions("https://i.example/", "", file, std::chrono::seconds(1));
  ASSERT_TRUE(read.ok()) << read.error().message;
  EXPECT_EQ(read->credentials, "user:secret");
  EXPECT_FALSE(ReadIndexOptions("https://i.example/", dir + "/no-ca.pem", "",
                                std::chrono::seconds(1)).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mcpexec::packages

namespace mcpexec::packages {
namespace {

// A connection the installer opened and then neither finished a request on nor closed (pip
// stuck, or killed with the relay still up) must not hold Stop() for the 30 s socket timeouts.
TEST(IndexChannel, StopDoesNotWaitForAConnectionThatSaysNothing) {
  char dir_template[] = "/tmp/mcp-exec-channel-XXXXXX";
  ASSERT_NE(mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  IndexClient client(IndexOptions{"https://127.0.0.1:1/simple/", "", "", std::chrono::seconds(5)});
  auto channel = IndexChannel::Open(dir, client, dir, {}, 1 << 20);
  ASSERT_TRUE(channel.ok()) << channel.error().message;
  UniqueFd conn(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string path = dir + "/" + kIndexSocketName;
  ASSERT_LT(path.size(), sizeof addr.sun_path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  ASSERT_EQ(connect(conn.Get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(write(conn.Get(), "GET /simple/", 12), 12);  // a request head never finished
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the channel is in recv
  const auto before = std::chrono::steady_clock::now();
  (*channel)->Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - before, std::chrono::seconds(5));
  char byte;
  EXPECT_EQ(read(conn.Get(), &byte, 1), 0) << "the connection was not shut down";
  channel->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace mcpexec::packages

// The rootfs's Python packages work inside the sandbox (read-only rootfs, no network,
// HOME=/tmp, matplotlib on the rootfs's figure backend), and so do the standard library's
// concurrency modules under the default seccomp profile (clone3 is ENOSYS there, so every one of
// them falls back to clone).
#include <gtest/gtest.h>

#include <string>

#include "../support/sandbox_test.h"

namespace mcpexec::testing {
namespace {

using nlohmann::json;

class PythonStackTest : public SandboxTest {
 protected:
  json RunJson(const std::string& code) {
    const Outcome r = runner_.RunCode(code, {"--timeout", "60"});
    EXPECT_TRUE(IsRunResult(r));
    EXPECT_EQ(r.exit_status, 0) << r.Describe();
    const json j = r.ProgramJson();
    EXPECT_TRUE(j.is_object()) << r.Describe();
    return j.is_object() ? j : json::object();
  }
};

TEST_P(PythonStackTest, NumpyPandasAndMatplotlibWork) {
  const json j = RunJson(R"py(
import json
import numpy as np
import pandas as pd
import matplotlib
import matplotlib.pyplot as plt
a = np.arange(10)
df = pd.DataFrame({"x": a, "y": a ** 2})
plt.plot(df.x, df.y)
plt.savefig("plot.png")
print(json.dumps({"backend": matplotlib.get_backend().lower(), "sum": int(df.y.sum()),
                  "mean": float(np.mean(a)), "png": open("/tmp/plot.png", "rb").read(8).hex()}))
)py");
  EXPECT_EQ(j["backend"], "module://mcp_exec_figures");
  EXPECT_EQ(j["sum"], 285);
  EXPECT_EQ(j["mean"], 4.5);
  EXPECT_EQ(j["png"], "89504e470d0a1a0a") << "plot.png does not start with the PNG signature";
}

TEST_P(PythonStackTest, YamlJinja2AndPillowWork) {
  const json j = RunJson(R"py(
import json
import jinja2
import yaml
from PIL import Image
Image.new("RGB", (4, 3), (255, 0, 0)).save("/tmp/red.png")
back = Image.open("/tmp/red.png")
print(json.dumps({
    "yaml": yaml.safe_load("a: [1, 2]\nb: {c: x}"),
    "jinja2": jinja2.Template("Hello {{ name }}!").render(name="sandbox"),
    "format": back.format, "size": list(back.size), "pixel": list(back.getpixel((1, 1))),
}))
)py");
  EXPECT_EQ(j["yaml"], json::parse(R"py({"a": [1, 2], "b": {"c": "x"}})py"));
  EXPECT_EQ(j["jinja2"], "Hello sandbox!");
  EXPECT_EQ(j["format"], "PNG");
  EXPECT_EQ(j["size"], json({4, 3}));
  EXPECT_EQ(j["pixel"], json({255, 0, 0}));
}

TEST_P(PythonStackTest, ProcessesThreadsSubprocessAndAsyncioWorkUnderTheDefaultProfile) {
  const json j = RunJson(R"py(
import asyncio, json, multiprocessing as mp, subprocess, threading

def square(x):
    return x * x

# spawn and forkserver import this file again in their workers: the work runs only here.
if __name__ == "__main__":
    pools = {}
    for method in ("fork", "spawn", "forkserver"):
        with mp.get_context(method).Pool(2) as pool:
            pools[method] = pool.map(square, range(5))

    results = []
    threads = [threading.Thread(target=lambda i=i: results.append(i)) for i in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()

    ls = subprocess.run(["/bin/ls", "/usr"], capture_output=True, text=True, check=True)
    sh = subprocess.run(["/bin/sh", "-c", "echo $((6 * 7))"], capture_output=True, text=True,
                        check=True)

    async def echo_over_loopback():
        async def handle(reader, writer):
            writer.write(await reader.readline())
            await writer.drain()
            writer.close()
        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"ping\n")
        await writer.drain()
        line = await reader.readline()
        writer.close()
        server.close()
        await server.wait_closed()
        return line.decode().strip()

    print(json.dumps({
        "pools": pools, "threads": sorted(results), "ls_has_bin": "bin" in ls.stdout.split(),
        "sh": sh.stdout.strip(), "asyncio": asyncio.run(echo_over_loopback()),
    }))
)py");
  const json squares = {0, 1, 4, 9, 16};
  EXPECT_EQ(j["pools"], json({{"fork", squares}, {"spawn", squares}, {"forkserver", squares}}));
  EXPECT_EQ(j["threads"], json({0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(j["ls_has_bin"], true);
  EXPECT_EQ(j["sh"], "42");
  EXPECT_EQ(j["asyncio"], "ping");
}

MCPEXEC_INSTANTIATE_FOR_BOTH_MODES(PythonStackTest);

}  // namespace
}  // namespace mcpexec::testing

# FS-06: images that lie. bomb.png is a PNG header whose IHDR claims 100000 x 100000 pixels
# (40 GB decoded) with nothing behind it; fake.png is not a PNG at all. mcp-exec never decodes
# an image: bomb.png comes back as its bytes, and fake.png is not announced as an image.
open("/tmp/outputs/bomb.png", "wb").write(bytes.fromhex(PARAMS["bomb_hex"]))
open("/tmp/outputs/fake.png", "wb").write(PARAMS["fake"].encode())
report()

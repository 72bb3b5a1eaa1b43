import os

import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(4, 3), dpi=80)
ax.plot([0, 1, 2, 3], [0, 1, 4, 9], marker="o")
ax.set_title("squares")
fig.savefig("/tmp/outputs/plot.png")
plt.close(fig)
print("open figures:", plt.get_fignums())
print(sorted(os.listdir("/tmp/outputs")))
print(open("/tmp/outputs/plot.png", "rb").read(8))

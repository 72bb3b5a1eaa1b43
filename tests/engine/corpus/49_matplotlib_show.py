import matplotlib
import matplotlib.pyplot as plt

print("backend:", matplotlib.get_backend())
plt.figure(figsize=(3, 2), dpi=80)
plt.bar(["a", "b", "c"], [3, 1, 2])
plt.show()
print("open figures after show:", plt.get_fignums())
plt.figure(figsize=(2, 2), dpi=80)
plt.plot([1, 2, 1])
plt.show()

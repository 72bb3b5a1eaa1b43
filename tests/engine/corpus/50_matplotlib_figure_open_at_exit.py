import matplotlib.pyplot as plt

plt.figure(figsize=(3, 3), dpi=80)
plt.scatter([1, 2, 3], [3, 1, 2])
fig = plt.figure(figsize=(2, 1), dpi=80)
fig.text(0.1, 0.5, "left open")
print("open figures at exit:", plt.get_fignums())

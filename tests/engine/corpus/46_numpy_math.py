import numpy as np

a = np.arange(12, dtype=np.float64).reshape(3, 4)
print(a)
print(a.T @ a)
print(a.sum(axis=0), a.mean(), a.std().round(6))
m = np.array([[4.0, 1.0], [2.0, 3.0]])
print("det:", round(float(np.linalg.det(m)), 9))
print("inv:", np.linalg.inv(m))
print("solve:", np.linalg.solve(m, np.array([1.0, 2.0])))
print("eigvals:", np.sort(np.linalg.eigvals(m)))
print(np.linspace(0, 1, 7))
print(np.array([1e-10, 1.5, 1e10]))
print(np.array(["a", "bc"]), np.array([True, False]), np.int8(-128) - np.int8(1))
print(np.get_printoptions()["precision"], np.get_printoptions()["threshold"])
with np.errstate(divide="ignore"):
    print(np.array([1.0, -1.0, 0.0]) / 0.0)
print(np.array([1.0]) / 0.0)
print(np.arange(2000))

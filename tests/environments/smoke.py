# The smoke programs of the environment "data": one a package, each using it for real. Run by
# tests/environments/check, which takes each program by name:
#   python3 smoke.py NAME   prints the program's source
#   python3 smoke.py        prints the names, one a line
# Each program prints "ok NAME" as its last line when it worked.
import sys

PROGRAMS = {
    "sklearn": """
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
X, y = make_classification(n_samples=200, n_features=5, random_state=0)
model = LogisticRegression().fit(X, y)
assert model.score(X, y) > 0.8, model.score(X, y)
print("ok sklearn")
""",
    "scipy": """
import numpy as np
from scipy.optimize import minimize
result = minimize(lambda v: (v[0] - 3) ** 2 + (v[1] + 1) ** 2, np.zeros(2))
assert result.success and np.allclose(result.x, [3, -1], atol=1e-4), result
print("ok scipy")
""",
    "seaborn": """
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
df = pd.DataFrame({"x": range(20), "y": [v * v for v in range(20)], "g": ["a", "b"] * 10})
sns.lineplot(data=df, x="x", y="y", hue="g")
plt.savefig("/tmp/outputs/seaborn.png")
sns.histplot(df["y"])
plt.show()
print("ok seaborn")
""",
    "openpyxl": """
import openpyxl
book = openpyxl.Workbook()
sheet = book.active
sheet.append(["name", "value"])
sheet.append(["pi", 3.14159])
book.save("/tmp/book.xlsx")
again = openpyxl.load_workbook("/tmp/book.xlsx")
assert [c.value for c in again.active[2]] == ["pi", 3.14159]
print("ok openpyxl")
""",
    "bs4": """
from bs4 import BeautifulSoup
soup = BeautifulSoup("<html><body><p class='x'>one</p><p>two</p></body></html>", "lxml")
assert [p.get_text() for p in soup.find_all("p")] == ["one", "two"]
assert soup.select_one("p.x").string == "one"
print("ok bs4")
""",
    "sympy": """
import sympy
x = sympy.symbols("x")
assert set(sympy.solve(x ** 2 - 5 * x + 6, x)) == {2, 3}
assert sympy.integrate(sympy.sin(x), (x, 0, sympy.pi)) == 2
print("ok sympy")
""",
    "networkx": """
import networkx as nx
g = nx.Graph()
g.add_weighted_edges_from([("a", "b", 1), ("b", "c", 1), ("a", "c", 5), ("c", "d", 1)])
assert nx.shortest_path(g, "a", "d", weight="weight") == ["a", "b", "c", "d"]
print("ok networkx")
""",
    "statsmodels": """
import numpy as np
import statsmodels.api as sm
rng = np.random.default_rng(0)
x = rng.normal(size=100)
y = 2.0 * x + 1.0 + rng.normal(scale=0.1, size=100)
fit = sm.OLS(y, sm.add_constant(x)).fit()
assert np.allclose(fit.params, [1.0, 2.0], atol=0.1), fit.params
print("ok statsmodels")
""",
    "plotly": """
import json
import plotly.graph_objects as go
fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[4, 1, 2]))
data = json.loads(fig.to_json())
assert data["data"][0]["type"] == "scatter"
print("ok plotly")
""",
    "skimage": """
import numpy as np
from skimage import filters
image = np.zeros((32, 32))
image[8:24, 8:24] = 1.0
edges = filters.sobel(image)
assert edges.max() > 0 and edges[0, 0] == 0
assert 0 < filters.threshold_otsu(image) < 1
print("ok skimage")
""",
    "xlrd": """
import xlrd
assert xlrd.__version__
print("ok xlrd")
""",
    "lxml": """
from lxml import etree
root = etree.fromstring("<r><item n='1'>a</item><item n='2'>b</item></r>")
assert root.xpath("//item[@n='2']/text()") == ["b"]
print("ok lxml")
""",
}

if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.stdout.write(PROGRAMS[sys.argv[1]])
    else:
        print("\n".join(PROGRAMS))

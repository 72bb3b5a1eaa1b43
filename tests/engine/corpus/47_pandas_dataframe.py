import pandas as pd

df = pd.DataFrame({
    "city": ["Oslo", "Lima", "Oslo", "Pune", "Lima", "Oslo"],
    "year": [2020, 2020, 2021, 2021, 2021, 2022],
    "sales": [10.5, 3.25, 7.0, 12.0, 4.75, 9.125],
})
df["double"] = df["sales"] * 2
print(df.to_string())
print(df.groupby("city")["sales"].agg(["sum", "mean", "count"]))
print(df.pivot_table(index="city", columns="year", values="sales", aggfunc="sum"))
print(df.describe())
print(df.sort_values(["city", "sales"], ascending=[True, False]).to_csv(index=False), end="")
print(df.dtypes)
print(pd.Series([1, None, 3]).fillna(0).tolist())
print(pd.date_range("2024-01-30", periods=3, freq="D"))
print(df)

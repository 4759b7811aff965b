#!/bin/bash
cat >> shapes/geometry.py <<'PY'


def triangle_area(a, b, c):
    if min(a, b, c) <= 0 or a + b <= c or a + c <= b or b + c <= a:
        raise ValueError("these sides form no triangle")
    s = (a + b + c) / 2
    return math.sqrt(s * (s - a) * (s - b) * (s - c))
PY
sed -i 's/from shapes.geometry import circle_area, square_area/from shapes.geometry import circle_area, square_area, triangle_area/' shapes/registry.py
sed -i 's/    "circle": circle_area,/    "circle": circle_area,\n    "triangle": triangle_area,/' shapes/registry.py

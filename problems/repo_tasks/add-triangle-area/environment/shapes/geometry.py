import math


def square_area(side):
    if side < 0:
        raise ValueError("a side cannot be negative")
    return float(side * side)


def circle_area(radius):
    if radius < 0:
        raise ValueError("a radius cannot be negative")
    return math.pi * radius * radius

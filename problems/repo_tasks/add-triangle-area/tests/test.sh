#!/bin/bash
cd /app
python -m pytest -q /tests/test_triangle.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

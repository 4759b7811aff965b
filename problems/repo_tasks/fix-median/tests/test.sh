#!/bin/bash
# Harbor's verifier: the hidden tests against the workspace, the reward in /logs/verifier/reward.txt.
cd /app
python -m pytest -q /tests/test_median.py
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi

"""Statistics: bootstrap intervals, paired tests, calibration and exponential fits."""

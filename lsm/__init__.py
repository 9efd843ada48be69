"""lsm: a LevelDB-style LSM storage engine."""

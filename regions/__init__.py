"""regions: an HBase-style region server over the lsm engine."""


BweightJÈ<m5=§:
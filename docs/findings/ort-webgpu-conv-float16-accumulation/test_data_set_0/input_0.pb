
BinputJ«¾
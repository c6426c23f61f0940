
BoutputJÙ$
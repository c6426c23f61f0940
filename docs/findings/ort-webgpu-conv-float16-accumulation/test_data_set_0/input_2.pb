
B
past_stateJX9A?Ǟ
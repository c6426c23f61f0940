
Bpresent_stateJA?Çž«¾
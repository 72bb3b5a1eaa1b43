print("the program ran to its end")

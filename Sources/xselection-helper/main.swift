print("helper")

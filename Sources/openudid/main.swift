print("openudid")

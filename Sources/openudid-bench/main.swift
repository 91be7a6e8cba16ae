print("openudid-bench: not yet")

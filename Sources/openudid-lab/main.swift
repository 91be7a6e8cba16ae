print("openudid-lab: not yet")

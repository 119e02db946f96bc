print("crash child placeholder")

print("tipsd")

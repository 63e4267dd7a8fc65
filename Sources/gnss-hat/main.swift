print("gnss-hat: not yet")

"""A small list of names for the makemore-style programs (no download needed)."""

WORDS = """
emma olivia ava isabella sophia mia amelia harper evelyn abigail emily ella elizabeth
camila luna sofia avery mila aria scarlett penelope layla chloe victoria madison eleanor
grace nora riley zoey hannah hazel lily ellie violet lillian zoe stella aurora natalie
liam noah oliver elijah william james benjamin lucas henry alexander mason michael ethan
daniel jacob logan jackson levi sebastian mateo jack owen theodore aiden samuel joseph
john david wyatt matthew luke asher carter julian grayson leo jayden gabriel isaac
""".split()

from riddlectl.cli import main

main()

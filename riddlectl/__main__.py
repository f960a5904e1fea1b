from riddlectl.cli.app import main

main()

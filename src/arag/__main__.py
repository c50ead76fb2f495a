from arag.cli import main

main()

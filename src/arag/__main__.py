from arag.serve.cli import main

main()

from vidmem.cli.app import main

main()

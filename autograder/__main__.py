from autograder.commands.entry import main

raise SystemExit(main())

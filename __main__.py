from softrank.cli import main

raise SystemExit(main())

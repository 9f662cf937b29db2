from eagletui.cli import main

raise SystemExit(main())

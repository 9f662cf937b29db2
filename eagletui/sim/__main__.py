from eagletui.sim.cli import main

raise SystemExit(main())

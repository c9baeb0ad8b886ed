"""An instance's state on disk: its config, home layout, lease, role doc and lane, the role
doc's download, the debug log, and the files it reads safely (`regular_file`)."""

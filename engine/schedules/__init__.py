"""What a schedule is: the validated spec, the YAML schedule file, argv rendering."""

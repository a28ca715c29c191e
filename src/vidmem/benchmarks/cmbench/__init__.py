"""The cmbench benchmark."""

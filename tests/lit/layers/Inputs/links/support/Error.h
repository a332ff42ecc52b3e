// errors

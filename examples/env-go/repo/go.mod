module example.com/hello

go 1.21

require example.com/greetings v1.0.0

__version__ = '1.8.1+cu111'
debug = False
cuda = '11.1'
git_version = '56b43f4fec1f76953f15a627694d4bba34588969'
hip = None

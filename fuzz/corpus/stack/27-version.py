__version__ = '2.3.0+cpu'
debug = False
cuda: Optional[str] = None
hip: Optional[str] = None

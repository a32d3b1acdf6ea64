__version__ = '2.5.1+cu124'
cuda: Optional[str] = '12.4'

# expect: 3:18 unsupported annotation
# options: --size N=8
def f(N: int, A: list):
    for i in range(N):
        A[i] = 1.0

// expect: 3:1 syntax
// options: --size N=8
def f(N, A):
    for i in range(N):
        A[i] = 0
